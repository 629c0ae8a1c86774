/** Under the chaos queue (`npm run test:chaos`) a message may be delivered twice, even at once. */
export const UNDER_CHAOS = process.env.SQS_CHAOS === '1';
