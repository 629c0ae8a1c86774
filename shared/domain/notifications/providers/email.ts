import { SendEmailCommand, SESv2Client } from '@aws-sdk/client-sesv2';
import { createTransport, type Transporter } from 'nodemailer';
import type { NotifyConfig } from '../../../config/env.ts';
import { mailSubject } from '../channel-message.ts';
import { plainText, type RenderedMessage } from '../render.ts';
import { FORMAT_HTML } from '../../tasks/templates.ts';
import { sdkClient } from '../../../platform.ts';
import { awsErrorOutcome, awsClientOptions } from './aws.ts';
import { delivered, failed, rejected, type SendOutcome, sanitizeDetail } from './types.ts';

/**
 * E-mail: SMTP through nodemailer, or Amazon SES (SESv2 SendEmail). One message per recipient (no
 * recipient sees the others, and a refused address does not hold up the rest). The subject is the
 * template title; HTML templates are sent as HTML with a plain-text alternative.
 */
export interface Mailer {
  send(to: string, m: RenderedMessage): Promise<SendOutcome>;
}

export interface MailContent {
  subject: string;
  text: string;
  html?: string;
}

export function mailContent(m: RenderedMessage): MailContent {
  const subject = mailSubject(m.title);
  return m.format === FORMAT_HTML ? { subject, text: plainText(m), html: m.body } : { subject, text: m.body };
}

/** nodemailer errors: SMTP 5xx refuses the message, 4xx and connection trouble are retried. */
export function smtpErrorOutcome(err: unknown): SendOutcome {
  const e = err as { responseCode?: number; code?: string; response?: string; message?: string };
  if (typeof e.responseCode === 'number') {
    const code = `smtp_${e.responseCode}`;
    const detail = sanitizeDetail(e.response ?? e.message);
    return e.responseCode >= 500 ? rejected(code, detail) : failed(code, detail);
  }
  return failed(e.code ?? 'smtp_error', sanitizeDetail(e.message));
}

export function smtpMailer(
  cfg: Extract<NonNullable<NotifyConfig['email']>, { provider: 'smtp' }>,
  timeoutMs: number,
): Mailer {
  let transport: Transporter | undefined;
  return {
    async send(to, m) {
      transport ??= createTransport({
        host: cfg.host,
        port: cfg.port,
        secure: cfg.secure,
        auth: cfg.user ? { user: cfg.user, pass: cfg.pass ?? '' } : undefined,
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs * 2,
      });
      try {
        const info = await transport.sendMail({ from: cfg.from, to, ...mailContent(m) });
        if (info.rejected?.length) return rejected('smtp_rejected', 'recipient refused');
        return delivered('250', sanitizeDetail(info.messageId));
      } catch (err) {
        return smtpErrorOutcome(err);
      }
    },
  };
}

export function sesMailer(
  cfg: Extract<NonNullable<NotifyConfig['email']>, { provider: 'ses' }>,
  region: string,
): Mailer {
  const client = sdkClient('ses', (s) => new SESv2Client({ ...awsClientOptions(region, cfg.endpoint), ...s }));
  return {
    async send(to, m) {
      const c = mailContent(m);
      try {
        const out = await client.send(sesRequest(cfg.from, to, c));
        return delivered('200', sanitizeDetail(out.MessageId));
      } catch (err) {
        return awsErrorOutcome(err);
      }
    },
  };
}

export function sesRequest(from: string, to: string, c: MailContent): SendEmailCommand {
  return new SendEmailCommand({
    FromEmailAddress: from,
    Destination: { ToAddresses: [to] },
    Content: {
      Simple: {
        Subject: { Data: c.subject, Charset: 'UTF-8' },
        Body: {
          Text: { Data: c.text, Charset: 'UTF-8' },
          ...(c.html ? { Html: { Data: c.html, Charset: 'UTF-8' } } : {}),
        },
      },
    },
  });
}
