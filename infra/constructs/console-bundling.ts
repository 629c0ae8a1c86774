import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';

/** The handler of `GET /console` (definitions.ts), whose bundle carries the console's page. */
export const CONSOLE_ENTRY = 'functions/http/console/get-console.ts';

/**
 * The console function's bundling: after esbuild bundles the handler, scripts/build-console.ts builds
 * the web console into `console.html` beside `index.mjs` (where the handler reads it), with the Node
 * that runs this synth (the project's Node 24). Local bundling runs the hooks in the project root.
 */
export function consoleCommandHooks(nodeBinary: string = process.execPath): nodejs.ICommandHooks {
  const q = (s: string) => JSON.stringify(s);
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir, outputDir) => [
      `${q(nodeBinary)} --import tsx scripts/build-console.ts ${q(`${outputDir}/console.html`)}`,
    ],
  };
}
