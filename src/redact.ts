/**
 * Every URL in `text` with its userinfo (`user:password@`) replaced: a URL from the configuration
 * (SCHEMA_REGISTRY_URL may carry credentials) is shown this way wherever it is logged, thrown or
 * printed. The authority runs to the last `@` before the path, so a password with a raw `@` goes too.
 */
export function redactUserinfo(text: string): string {
  return text.replace(USERINFO, "$1[redacted]@");
}

const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*(?:@[^\s/?#@]*)*@/gi;
