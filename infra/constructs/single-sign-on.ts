import { RemovalPolicy, SecretValue, Validations } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { ServiceHttpApi } from './http-api.ts';

/**
 * Single sign-on for the console through an OpenID Connect provider (Amazon Cognito user pools, or an
 * enterprise provider: docs/sign-in.md). Off unless the stack is given the provider's issuer and the
 * client id it registered for the console (`-c oidcIssuer=... -c oidcClientId=...`). The client secret
 * the provider issued is not in the template: it lives in the secret this construct makes (created as
 * `none`, a public client that authenticates with PKCE alone; the operator puts the provider's secret
 * with `aws secretsmanager put-secret-value`), which only the two single sign-on functions may read,
 * once per cold start: they declare it in their access (`sso-client`, infra/definitions.ts), and the
 * secret exists before the functions so that their roles can name it. The session route learns only
 * that single sign-on is offered (the issuer and client id), for the sign-in page.
 */
export interface SingleSignOnProps {
  issuer?: string;
  clientId?: string;
  /**
   * Take e-mail addresses the provider does not mark verified (`-c oidcAllowUnverifiedEmail=true`):
   * only for a provider that never sends `email_verified` and verifies every address itself
   * (docs/security.md). Off by default.
   */
  allowUnverifiedEmail?: boolean;
}

/** The client secret's value for a public client (no secret; PKCE only). */
export const PUBLIC_CLIENT = 'none';

/** The routes that talk to the provider (and read the client secret). */
export const SSO_ROUTES = ['GET /auth/oidc/start', 'GET /auth/oidc/callback'] as const;
/** The route that tells the sign-in page whether to offer single sign-on. */
export const SSO_OFFER_ROUTE = 'GET /auth/session';

export class SingleSignOn extends Construct {
  /** The provider's client secret (only when single sign-on is configured). */
  readonly clientSecret?: secretsmanager.Secret;
  private readonly settings?: { issuer: string; clientId: string; allowUnverifiedEmail: boolean };

  constructor(scope: Construct, id: string, props: SingleSignOnProps) {
    super(scope, id);
    const { issuer, clientId } = props;
    if (issuer === undefined && clientId === undefined) {
      if (props.allowUnverifiedEmail)
        throw new Error('single sign-on: oidcAllowUnverifiedEmail needs oidcIssuer');
      return;
    }
    if (!issuer || !clientId) throw new Error('single sign-on: oidcIssuer and oidcClientId go together');
    if (!/^https:\/\/[^\s/?#]+(?:\/[^\s?#]*)?$/.test(issuer))
      throw new Error('single sign-on: oidcIssuer must be an https URL (the provider’s issuer)');
    this.settings = { issuer, clientId, allowUnverifiedEmail: props.allowUnverifiedEmail === true };
    this.clientSecret = new secretsmanager.Secret(this, 'ClientSecret', {
      description:
        'tocsin single sign-on: the OpenID Connect client secret the identity provider issued for the console.',
      // Not a secret: the placeholder of a public client, until the operator puts the provider's secret.
      secretStringValue: SecretValue.unsafePlainText(PUBLIC_CLIENT),
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.clientSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'A credential issued by the identity provider: Secrets Manager cannot rotate it at the provider; the ' +
        'operator puts the new value when the provider rotates it.',
    });
  }

  /**
   * The provider's settings for the functions that use them, once the API made them (the client
   * secret's ARN comes with their access; ServiceFunctions).
   */
  configure(http: ServiceHttpApi): void {
    if (!this.settings) return;
    const { issuer, clientId, allowUnverifiedEmail } = this.settings;
    for (const routeKey of [...SSO_ROUTES, SSO_OFFER_ROUTE]) {
      const fn = http.handlers.get(routeKey) as lambda.Function | undefined;
      if (!fn) throw new Error(`single sign-on: no function for ${routeKey} in the route table`);
      fn.addEnvironment('OIDC_ISSUER', issuer).addEnvironment('OIDC_CLIENT_ID', clientId);
      if (allowUnverifiedEmail) fn.addEnvironment('OIDC_ALLOW_UNVERIFIED_EMAIL', '1');
    }
  }
}
