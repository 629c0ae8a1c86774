import { plainText, type RenderedMessage, truncate } from './render.ts';
import {
  FORMAT_ACTION_CARD,
  FORMAT_MARKDOWN,
  type NotifyChannel,
  type TemplateFormat,
} from '../tasks/templates.ts';

/**
 * What a channel sends of a rendered message (API guide §11.1): the title it shows, if any, and the text,
 * cut to the channel's limit. Pure and light (no provider SDK), so the template preview and the job
 * record show exactly what the providers send; the providers take their limits from here.
 */

/** SMS text is cut to this many characters (API guide §11.1). */
export const SMS_MAX_CHARS = 300;
/** Spoken text is cut to this many characters (API guide §11.1). */
export const VOICE_MAX_CHARS = 280;
/** An e-mail subject: the title on one line, at most this many characters. */
export const MAIL_SUBJECT_MAX_CHARS = 250;

export interface ChannelMessage {
  format: TemplateFormat;
  /** The e-mail subject or markdown title; absent where the channel shows none. */
  title?: string;
  /** The body as sent: HTML for HTML e-mail, markdown for markdown robots, plain text otherwise. */
  text: string;
}

export const mailSubject = (title: string) => title.replace(/[\r\n]+/g, ' ').slice(0, MAIL_SUBJECT_MAX_CHARS);

const markdownLike = (f: TemplateFormat) => f === FORMAT_MARKDOWN || f === FORMAT_ACTION_CARD;

export function channelMessage(channel: NotifyChannel, m: RenderedMessage): ChannelMessage {
  const format = m.format;
  switch (channel) {
    case 'sms':
      return { format, text: truncate(plainText(m), SMS_MAX_CHARS) };
    case 'phone':
      return { format, text: truncate(plainText(m), VOICE_MAX_CHARS) };
    case 'email':
      // HTML as HTML (with a plain-text alternative the provider derives), anything else as text.
      return { format, title: mailSubject(m.title), text: m.body };
    case 'wechat':
      // WeChat Work's markdown message has no title.
      return markdownLike(format) ? { format, text: m.body } : { format, text: plainText(m) };
    default:
      // Robots and the DingTalk / Yach work notices: markdown (or an action card) with its title,
      // every other format as plain text.
      return markdownLike(format) ? { format, title: m.title, text: m.body } : { format, text: plainText(m) };
  }
}

/** Bytes of a message kept in a job record (title and text together). */
export const STORED_MESSAGE_MAX_BYTES = 2048;

export interface StoredMessage extends ChannelMessage {
  /** The text was cut to fit the record (what was sent was longer). */
  truncated?: true;
}

/** Cuts a string to at most `max` UTF-8 bytes, on a code point boundary. */
function cutBytes(s: string, max: number): string {
  if (Buffer.byteLength(s, 'utf8') <= max) return s;
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > max) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/** The message as a job record keeps it: title and text within STORED_MESSAGE_MAX_BYTES. */
export function storedMessage(m: ChannelMessage): StoredMessage {
  const title = m.title === undefined ? undefined : cutBytes(m.title, 512);
  const room = STORED_MESSAGE_MAX_BYTES - (title ? Buffer.byteLength(title, 'utf8') : 0);
  const text = cutBytes(m.text, room);
  return {
    format: m.format,
    ...(title !== undefined ? { title } : {}),
    text,
    ...(text !== m.text || title !== m.title ? { truncated: true as const } : {}),
  };
}
