/**
 * Keeps the API token out of every text the client produces. Errors are built from server
 * responses and socket errors; neither should ever echo the token, but a log line or a PR
 * comment is the wrong place to find out that one did.
 */

const TOKEN_HEADER_RE = /PVEAPIToken[= ][^\s"';,]*/g;
const REDACTED = '[REDACTED]';

/** A function that replaces the token, its secret and any `PVEAPIToken=…` value in a text. */
export type Redactor = (text: string) => string;

/** Builds the redactor for one token (`USER@REALM!ID=SECRET`). */
export function createRedactor(token: string): Redactor {
  const eq = token.lastIndexOf('=');
  const secret = eq >= 0 ? token.slice(eq + 1) : token;
  // Longest first so the full token is replaced before its secret part.
  const needles = [token, encodeURIComponent(token), secret, encodeURIComponent(secret)]
    .filter((needle, index, all) => needle.length >= 4 && all.indexOf(needle) === index)
    .sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text.replace(TOKEN_HEADER_RE, `PVEAPIToken=${REDACTED}`);
    for (const needle of needles) out = out.split(needle).join(REDACTED);
    return out;
  };
}
