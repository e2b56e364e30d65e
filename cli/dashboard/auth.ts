// Who may talk to the dashboard (docs/dashboard.md, "Security model"): the headers every response
// carries, the Host check and the access token of every request (?token= once, then a cookie, or a
// Bearer header), and the checks of an action's POST (not read-only, Origin of the server, the
// process's CSRF token). Secrets are compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { type Env, HttpError, text } from "./http.js";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Constant-time equality of two strings (of any lengths: their digests are compared). */
export function sameSecret(given: string | undefined, secret: string): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(digest(given), digest(secret));
}

/** A fresh secret: 24 random bytes, base64url (the access token's default, and the CSRF token). */
export function newToken(): string {
  return randomBytes(24).toString("base64url");
}

/** The cookie that carries `token`. Cookies are per host, not per port: a name of this token keeps two dashboards apart. */
export function cookieNameOf(token: string): string {
  return `leaseq_dashboard_${digest(token).toString("hex").slice(0, 12)}`;
}

/** Sets the security headers on every response, whatever answered it (an error, a 401 or a page). */
export const securityHeaders: MiddlewareHandler<Env> = async (c, next) => {
  await next();
  const headers = c.res.headers;
  headers.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  headers.set("X-Content-Type-Options", "nosniff");
  // Not no-referrer: with it, Chromium sends "Origin: null" on form POSTs, which the Origin check refuses.
  headers.set("Referrer-Policy", "same-origin");
  headers.set("X-Frame-Options", "DENY");
  headers.set("Cache-Control", "no-store");
};

export interface AccessRules {
  token: string;
  cookieName: string;
  /** The Host headers accepted (lower case); undefined accepts any. */
  allowedHosts?: Set<string>;
  /** The command that printed the URL with the token (`leaseq dashboard`, `leaseq dev`): a 401 names it. */
  startedBy: string;
}

/**
 * Refuses a request whose Host is not the server's (403) or which carries no valid token (401).
 * A valid ?token= sets the cookie, and a GET carrying it is sent to the same address without it.
 */
export function requireAccess({ token, cookieName, allowedHosts, startedBy }: AccessRules): MiddlewareHandler<Env> {
  const hint = `open the URL with ?token= that \`${startedBy}\` printed`;
  return async (c, next) => {
    const host = c.req.header("host");
    if (allowedHosts && (host === undefined || !allowedHosts.has(host.toLowerCase()))) {
      return c.text("403 Forbidden: unexpected Host header\n", 403);
    }
    const query = c.req.query("token");
    if (query !== undefined) {
      if (!sameSecret(query, token)) return c.text(`401 Unauthorized: wrong token; ${hint}\n`, 401);
      setCookie(c, cookieName, token, { path: "/", httpOnly: true, sameSite: "Strict" });
      if (c.req.method === "GET") {
        // Take the token out of the address bar (and the browser's history).
        const url = new URL(c.req.url);
        url.searchParams.delete("token");
        return c.redirect(`${url.pathname}${url.search}`, 303);
      }
      return next();
    }
    const bearer = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1];
    if (sameSecret(bearer ?? getCookie(c, cookieName), token)) return next();
    return c.text(`401 Unauthorized: ${hint}\n`, 401);
  };
}

/**
 * The form of an action's POST, once it passed the checks: refused with 403 on a read-only
 * dashboard, when its Origin (or, without one, its Referer) is not this server, and when it does
 * not carry the CSRF token `csrf`.
 */
export async function actionForm(
  c: Context<Env>,
  { readOnly, csrf }: { readOnly: boolean; csrf: string },
): Promise<Record<string, unknown>> {
  if (readOnly) throw new HttpError(403, "This dashboard is read-only: actions are refused.");
  const host = c.req.header("host");
  const origin = c.req.header("origin") ?? originOfReferer(c.req.header("referer"));
  if (host === undefined || origin !== `http://${host}`) {
    throw new HttpError(403, "Refused: the request does not come from this dashboard's pages (Origin).");
  }
  const form = await c.req.parseBody({ all: true });
  if (!sameSecret(text(form._csrf), csrf)) {
    throw new HttpError(403, "Refused: missing or wrong CSRF token; reload the page and try again.");
  }
  return form;
}

function originOfReferer(referer: string | undefined): string | undefined {
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return undefined;
  }
}
