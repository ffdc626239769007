// A real OpenID provider for the identity tests: the npm package oidc-provider, configured for
// loopback. Its users live in a JSON file the tests rewrite (read again on every lookup, so a
// group change takes effect at the next login or token), and its signing keys in another (the
// tests write them, so a restart with a new file is a key rotation).
//
// Environment: OIDC_MODULE (path of oidc-provider's lib/index.js), PORT, ISSUER, USERS_FILE,
// KEYS_FILE, CLIENT_ID, CLIENT_SECRET, REDIRECT_URIS and POST_LOGOUT_REDIRECT_URIS (comma-separated),
// API_AUDIENCE (the resource the API's access tokens are for).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const { default: Provider } = await import(pathToFileURL(process.env.OIDC_MODULE).href);
const env = (name) => {
  if (!process.env[name]) throw new Error(`${name} is not set`);
  return process.env[name];
};
const API = env('API_AUDIENCE');
const users = () => JSON.parse(readFileSync(env('USERS_FILE'), 'utf8'));
const findUser = (id) => Object.entries(users()).find(([login, u]) => (u.sub || login) === id);

// Resources a client may ask a token for: the API, a short-lived token for the same API (the
// expiry test), and another API (the wrong-audience test).
const RESOURCES = {
  [API]: { audience: API, ttl: 600 },
  [`${API}:short`]: { audience: API, ttl: 2 },
  'urn:other:api': { audience: 'urn:other:api', ttl: 600 },
};

const provider = new Provider(env('ISSUER'), {
  clients: [{
    client_id: env('CLIENT_ID'),
    client_secret: env('CLIENT_SECRET'),
    redirect_uris: env('REDIRECT_URIS').split(','),
    post_logout_redirect_uris: (process.env.POST_LOGOUT_REDIRECT_URIS || '').split(',').filter(Boolean),
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  jwks: { keys: JSON.parse(readFileSync(env('KEYS_FILE'), 'utf8')) },
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  findAccount: async (_ctx, id) => {
    const found = findUser(id);
    if (!found) return undefined;
    const [login, u] = found;
    return {
      accountId: id,
      claims: async () => ({
        sub: id, email: u.email, email_verified: u.email_verified !== false,
        name: u.name || login, preferred_username: login, groups: u.groups || [],
      }),
    };
  },
  extraTokenClaims: async (_ctx, token) => {
    const found = token.accountId && findUser(token.accountId);
    return found ? { groups: found[1].groups || [] } : undefined;
  },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      // Plain pages (the defaults load web fonts, which a loopback test must not reach for).
      logoutSource: async (ctx, form) => {
        ctx.body = `<!doctype html><html><head><title>Sign out</title></head><body><h1>Sign out of the test provider?</h1>
${form}<button id="logout-yes" type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
</body></html>`;
      },
      postLogoutSuccessSource: async (ctx) => {
        ctx.body = '<!doctype html><html><body><h1 id="signed-out">Signed out</h1></body></html>';
      },
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, indicator) => {
        const r = RESOURCES[indicator];
        if (!r) throw new Provider.errors.InvalidTarget();
        return { scope: 'api', audience: r.audience, accessTokenTTL: r.ttl, accessTokenFormat: 'jwt',
                 jwt: { sign: { alg: 'RS256' } } };
      },
    },
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  ttl: { AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL || 600, IdToken: 600, Session: 3600, Interaction: 600, Grant: 3600 },
});
provider.proxy = false;

const page = (uid, error) => `<!doctype html><html><head><title>Test provider sign-in</title></head><body>
<h1>Test provider sign-in</h1>${error ? `<p id="error">${error}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
<label>Login <input id="login" name="login" autocomplete="off"></label>
<label>Password <input id="password" name="password" type="password"></label>
<button id="submit" type="submit">Sign in</button></form></body></html>`;

const readForm = (req) => new Promise((resolve) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => resolve(Object.fromEntries(new URLSearchParams(body))));
});

// The interaction pages: a login form, and consent granted for whatever was asked (a test
// provider; a real one asks the person).
provider.use(async (ctx, next) => {
  const m = ctx.path.match(/^\/interaction\/([^/]+)(\/login)?$/);
  if (!m) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (m[2] && ctx.method === 'POST') {
    const form = await readForm(ctx.req);
    const u = users()[form.login];
    if (!u || u.password !== form.password) {
      ctx.type = 'html';
      ctx.body = page(details.uid, 'Wrong login or password.');
      return undefined;
    }
    ctx.respond = false;
    return provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: u.sub || form.login } });
  }
  if (details.prompt.name === 'login') {
    ctx.type = 'html';
    ctx.body = page(details.uid);
    return undefined;
  }
  const grant = details.grantId ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  ctx.respond = false;
  return provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId } }, { mergeWithLastSubmission: true });
});

// Refusals in the log (tests/identity: provider.log in the test's temporary folder).
for (const event of ['end_session.error', 'grant.error', 'authorization.error', 'server_error']) {
  provider.on(event, (_ctx, err) => process.stderr.write(`${event}: ${err} ${err.error_description || ''} ${err.cause || ''}\n`));
}

provider.listen(Number(env('PORT')), '127.0.0.1', () => {
  process.stdout.write(`listening ${env('ISSUER')}\n`);
});
