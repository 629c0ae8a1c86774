import { PinpointSMSVoiceV2Client, SendVoiceMessageCommand } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import type { NotifyConfig } from '../../../config/env.ts';
import { VOICE_MAX_CHARS } from '../channel-message.ts';
import { truncate } from '../render.ts';
import { sdkClient } from '../../../platform.ts';
import { awsErrorOutcome, awsClientOptions } from './aws.ts';
import { e164, type TextSender } from './sms.ts';
import { delivered, sanitizeDetail } from './types.ts';

export { VOICE_MAX_CHARS };

export function voiceRequest(
  cfg: NonNullable<NotifyConfig['phone']>,
  phone: string,
  text: string,
): SendVoiceMessageCommand {
  return new SendVoiceMessageCommand({
    DestinationPhoneNumber: e164(phone, cfg.countryCode),
    OriginationIdentity: cfg.originationIdentity,
    MessageBody: truncate(text, VOICE_MAX_CHARS),
    MessageBodyTextType: 'TEXT',
    VoiceId: cfg.voiceId as never,
  });
}

/** Amazon Pinpoint SMS and Voice v2 SendVoiceMessage (a text-to-speech call). */
export function pinpointVoice(cfg: NonNullable<NotifyConfig['phone']>, region: string): TextSender {
  const client = sdkClient(
    'sms-voice',
    (s) => new PinpointSMSVoiceV2Client({ ...awsClientOptions(region, cfg.endpoint), ...s }),
  );
  return {
    async send(phone, text) {
      try {
        const out = await client.send(voiceRequest(cfg, phone, text));
        return delivered('200', sanitizeDetail(out.MessageId));
      } catch (err) {
        return awsErrorOutcome(err);
      }
    },
  };
}
