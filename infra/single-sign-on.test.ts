import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { SSO_OFFER_ROUTE, SSO_ROUTES } from './constructs/single-sign-on.ts';
import { PROJECT_ROOT, TocsinStack } from './stack.ts';

/**
 * Console single sign-on on AWS (infra/constructs/single-sign-on.ts): off by default; with the
 * provider's issuer and client id, a secret for the client secret that only the single sign-on
 * functions read, and the settings in their environment.
 */
type Resource = { Type: string; Properties: Record<string, unknown> };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

const CDK_CONTEXT = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }
).context;
const ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example';
const SYNTH_TIMEOUT_MS = 120_000;

function synth(singleSignOn?: { issuer?: string; clientId?: string; allowUnverifiedEmail?: boolean }) {
  const app = new App({ context: CDK_CONTEXT });
  const stack = new TocsinStack(app, 'Tocsin-sso', {
    env: { account: '123456789012', region: 'eu-west-1' },
    envName: 'test',
    skipBundling: true,
    singleSignOn,
  });
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  /** The Lambda behind a route key. */
  const functionOf = (routeKey: string) => {
    const [[, route]] = ofType('AWS::ApiGatewayV2::Route').filter(
      ([, r]) => r.Properties.RouteKey === routeKey,
    );
    const integration = /"Ref":"([^"]+)"/.exec(JSON.stringify(route.Properties.Target))![1];
    return (resources[integration].Properties.IntegrationUri as { 'Fn::GetAtt': [string, string] })[
      'Fn::GetAtt'
    ][0];
  };
  const envOf = (fn: string) =>
    (resources[fn].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
  const canRead = (fn: string, secretId: string) => {
    const role = (resources[fn].Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    type Document = { PolicyDocument: { Statement: Statement[] } };
    const inline = ((resources[role].Properties.Policies ?? []) as Document[]).flatMap(
      (p) => p.PolicyDocument.Statement,
    );
    const attached = ofType('AWS::IAM::Policy')
      .filter(([, p]) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === role))
      .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
    return [...inline, ...attached].some(
      (s) =>
        s.Effect === 'Allow' &&
        JSON.stringify(s.Resource ?? null).includes(`"${secretId}"`) &&
        [s.Action].flat().includes('secretsmanager:GetSecretValue'),
    );
  };
  return { stack, resources, ofType, functionOf, envOf, canRead };
}

describe('console single sign-on on AWS', () => {
  it('is off without the provider’s settings: no secret, no OIDC variable', {
    timeout: SYNTH_TIMEOUT_MS,
  }, () => {
    const { stack, ofType } = synth();
    expect(stack.singleSignOn.clientSecret).toBeUndefined();
    const variables = ofType('AWS::Lambda::Function').flatMap(([, f]) =>
      Object.keys((f.Properties.Environment as { Variables: object }).Variables),
    );
    expect(variables.filter((v) => v.startsWith('OIDC_'))).toEqual([]);
  });

  it('keeps the client secret in a secret only the single sign-on functions read; the issuer and client id in their environment', {
    timeout: SYNTH_TIMEOUT_MS,
  }, () => {
    // Act
    const t = synth({ issuer: ISSUER, clientId: 'console-client' });
    // Assert: one secret, empty in the template, kept when the stack goes
    const secretId = t.stack.getLogicalId(t.stack.singleSignOn.clientSecret!.node.defaultChild as never);
    expect(t.resources[secretId]).toMatchObject({
      Type: 'AWS::SecretsManager::Secret',
      DeletionPolicy: 'Retain',
      Properties: { SecretString: 'none' },
    });
    for (const routeKey of SSO_ROUTES) {
      const fn = t.functionOf(routeKey);
      expect(t.envOf(fn), routeKey).toMatchObject({
        OIDC_ISSUER: ISSUER,
        OIDC_CLIENT_ID: 'console-client',
        OIDC_CLIENT_SECRET_ARN: { Ref: secretId },
      });
      // Verified addresses only, unless the deployment says otherwise.
      expect(t.envOf(fn).OIDC_ALLOW_UNVERIFIED_EMAIL, routeKey).toBeUndefined();
      expect(t.canRead(fn, secretId), routeKey).toBe(true);
    }
    const offer = t.envOf(t.functionOf(SSO_OFFER_ROUTE));
    expect(offer).toMatchObject({ OIDC_ISSUER: ISSUER, OIDC_CLIENT_ID: 'console-client' });
    expect(offer.OIDC_CLIENT_SECRET_ARN).toBeUndefined();
    // No function beyond the sign-in routes may read it.
    const readers = t
      .ofType('AWS::Lambda::Function')
      .filter(([id]) => t.canRead(id, secretId))
      .map(([, f]) => String(f.Properties.Description));
    expect(readers.length).toBeGreaterThanOrEqual(2);
    for (const d of readers) expect(d).toMatch(/^tocsin functions\/http\/auth\//);
    expect(t.stack.node.tryFindChild('SsoClientSecretArn')).toBeDefined();
  });

  it('passes the opt-out for providers that never send email_verified to the single sign-on functions', {
    timeout: SYNTH_TIMEOUT_MS,
  }, () => {
    const t = synth({ issuer: ISSUER, clientId: 'console-client', allowUnverifiedEmail: true });
    for (const routeKey of SSO_ROUTES)
      expect(t.envOf(t.functionOf(routeKey)).OIDC_ALLOW_UNVERIFIED_EMAIL, routeKey).toBe('1');
  });

  it('finds nothing unacknowledged with single sign-on on', { timeout: SYNTH_TIMEOUT_MS }, () => {
    const { stack } = synth({ issuer: ISSUER, clientId: 'console-client' });
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });

  it.each([
    ['an issuer without a client id', { issuer: ISSUER }, 'oidcIssuer and oidcClientId go together'],
    ['a client id without an issuer', { clientId: 'c' }, 'oidcIssuer and oidcClientId go together'],
    ['an http issuer', { issuer: 'http://idp.example.com', clientId: 'c' }, 'must be an https URL'],
    [
      'the opt-out without a provider',
      { allowUnverifiedEmail: true },
      'oidcAllowUnverifiedEmail needs oidcIssuer',
    ],
  ])('refuses %s at synth', (_what, props, message) => {
    expect(() => synth(props)).toThrow(message);
  });
});
