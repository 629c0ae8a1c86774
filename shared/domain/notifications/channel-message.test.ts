import { describe, expect, it } from 'vitest';
import { channelMessage, STORED_MESSAGE_MAX_BYTES, storedMessage } from './channel-message.ts';
import { mailContent } from './providers/email.ts';
import { robotBody } from './providers/robot.ts';
import { smsRequest } from './providers/sms.ts';
import { voiceRequest } from './providers/voice.ts';
import { plainText, type RenderedMessage } from './render.ts';

/** channelMessage must show what the providers send: compared with their own request builders. */
const html: RenderedMessage = {
  format: 3,
  title: 'Disk\nfull',
  body: `<h3>Disk full</h3><table><tr><th>Host</th><td>db-1 &amp; ${'x'.repeat(400)}</td></tr></table>`,
};
const markdown: RenderedMessage = { format: 2, title: 'Disk full', body: '### Disk full\n- **Host**: db-1' };
const text: RenderedMessage = { format: 1, title: 'Disk full', body: 'Disk full on db-1' };

describe('channelMessage', () => {
  it('an SMS is the plain text the SNS request carries, cut to 300 characters', () => {
    // The consumer hands the provider plainText(message); the provider cuts it.
    const m = channelMessage('sms', html);
    expect(m.text).toBe(smsRequest('13800000000', plainText(html), '+86').input.Message);
    expect([...m.text]).toHaveLength(300);
    expect(m.title).toBeUndefined();
  });

  it('a call is the spoken text Pinpoint gets, cut to 280 characters', () => {
    const m = channelMessage('phone', html);
    const cfg = { originationIdentity: 'o', voiceId: 'ZHIYU', countryCode: '+86' } as never;
    expect(m.text).toBe(voiceRequest(cfg, '13800000000', plainText(html)).input.MessageBody);
    expect([...m.text]).toHaveLength(280);
  });

  it('an e-mail is its subject on one line and the HTML body', () => {
    const m = channelMessage('email', html);
    const mail = mailContent(html);
    expect(m).toEqual({ format: 3, title: mail.subject, text: mail.html });
    expect(m.title).toBe('Disk full');
  });

  it.each([
    ['markdown', markdown],
    ['text', text],
    ['html', html],
  ])('a robot message (%s) is what the robot body shows', (_name, rendered) => {
    const m = channelMessage('dinggroup', rendered);
    const body = robotBody(rendered) as {
      msgtype: string;
      markdown?: { title: string; text: string };
      text?: { content: string };
    };
    if (body.msgtype === 'markdown') expect(m).toMatchObject(body.markdown as object);
    else expect(m).toEqual({ format: rendered.format, text: body.text?.content });
  });

  it('a WeChat markdown message has no title', () => {
    expect(channelMessage('wechat', markdown)).toEqual({ format: 2, text: markdown.body });
  });
});

describe('storedMessage', () => {
  it('keeps a short message whole', () => {
    expect(storedMessage({ format: 1, text: 'hello' })).toEqual({ format: 1, text: 'hello' });
  });

  it('cuts a long one to the byte budget on a character boundary and says so', () => {
    const m = storedMessage({ format: 1, title: 'T', text: '告警'.repeat(2000) });
    expect(m.truncated).toBe(true);
    expect(Buffer.byteLength(m.text) + Buffer.byteLength(m.title ?? '')).toBeLessThanOrEqual(
      STORED_MESSAGE_MAX_BYTES,
    );
    expect(m.text.endsWith('告') || m.text.endsWith('警')).toBe(true);
  });
});
