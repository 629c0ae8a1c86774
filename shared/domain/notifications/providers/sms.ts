import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import type { NotifyConfig } from '../../../config/env.ts';
import { SMS_MAX_CHARS } from '../channel-message.ts';
import { truncate } from '../render.ts';
import { sdkClient } from '../../../platform.ts';
import { awsErrorOutcome, awsClientOptions } from './aws.ts';
import { delivered, type SendOutcome, sanitizeDetail } from './types.ts';

export { SMS_MAX_CHARS };

/**
 * A stored phone number in E.164. Numbers already starting with `+` are kept; others (the directory
 * holds mainland numbers like 13800000000) get the configured country code, `+86` by default.
 */
export function e164(phone: string, countryCode: string): string {
  const trimmed = phone.replace(/[\s-]/g, '');
  if (trimmed.startsWith('+')) return trimmed;
  if (trimmed.startsWith('00')) return `+${trimmed.slice(2)}`;
  return `${countryCode}${trimmed}`;
}

export interface TextSender {
  send(phone: string, text: string): Promise<SendOutcome>;
}

export function smsRequest(phone: string, text: string, countryCode: string): PublishCommand {
  return new PublishCommand({
    PhoneNumber: e164(phone, countryCode),
    Message: truncate(text, SMS_MAX_CHARS),
    MessageAttributes: { 'AWS.SNS.SMS.SMSType': { DataType: 'String', StringValue: 'Transactional' } },
  });
}

/** Amazon SNS Publish to a phone number. */
export function snsSms(cfg: NonNullable<NotifyConfig['sms']>, region: string): TextSender {
  const client = sdkClient('sns', (s) => new SNSClient({ ...awsClientOptions(region, cfg.endpoint), ...s }));
  return {
    async send(phone, text) {
      try {
        const out = await client.send(smsRequest(phone, text, cfg.countryCode));
        return delivered('200', sanitizeDetail(out.MessageId));
      } catch (err) {
        return awsErrorOutcome(err);
      }
    },
  };
}
