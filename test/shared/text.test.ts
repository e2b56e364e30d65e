import { describe, expect, it } from "vitest";
import { redact, SECRET_REDACTED_INSIDE_WORDS_FROM_LENGTH } from "../../shared/text.js";

describe("redact", () => {
  it("takes a one-letter REDIS_URL password out of the URL and where it stands alone, leaving the words that hold it", () => {
    const env = { REDIS_URL: "redis://:a@127.0.0.1:6379" };
    const message =
      "ERR AUTH <password> called without any password configured for the default user; REDIS_URL=redis://:a@127.0.0.1:6379, password a";
    expect(redact(message, env)).toBe(
      "ERR AUTH <password> called without any password configured for the default user; REDIS_URL=redis://:***@127.0.0.1:6379, password ***",
    );
  });

  it("takes a two-letter Upstash token out after token= and in a header, not out of about, tab or abc", () => {
    const env = { UPSTASH_REDIS_REST_TOKEN: "ab" };
    expect(redact("GET /?token=ab&x=1 (Authorization: Bearer ab): about tab abc", env)).toBe(
      "GET /?token=***&x=1 (Authorization: Bearer ***): about tab abc",
    );
  });

  it("replaces a secret from the threshold's length wherever it appears, glued to a word too; a shorter one only alone", () => {
    const long = "k".repeat(SECRET_REDACTED_INSIDE_WORDS_FROM_LENGTH);
    expect(redact(`Bearer${long} x${long}y ${long}`, { UPSTASH_REDIS_REST_TOKEN: long })).toBe("Bearer*** x***y ***");
    const short = long.slice(1);
    expect(redact(`Bearer${short} ${short}`, { UPSTASH_REDIS_REST_TOKEN: short })).toBe(`Bearer${short} ***`);
  });

  it("takes out a password as the URL writes it (percent-encoded) and as Redis was sent it (decoded)", () => {
    const env = { REDIS_URL: "redis://:p%40ss@redis.internal:6379" };
    expect(redact("redis://:p%40ss@redis.internal:6379 refused p@ss for password", env)).toBe(
      "redis://:***@redis.internal:6379 refused *** for password",
    );
    // Not valid percent-encoding: still redacted as written.
    expect(redact("AUTH ab%zz failed", { REDIS_URL: "redis://:ab%zz@redis.internal" })).toBe("AUTH *** failed");
  });

  it("matches a secret's characters literally, and replaces a secret holding another one whole", () => {
    expect(redact("axb a.b", { UPSTASH_REDIS_REST_TOKEN: "a.b" })).toBe("axb ***");
    const env = { UPSTASH_REDIS_REST_TOKEN: "abc-token-0123456789", REDIS_URL: "redis://:abc@h" };
    expect(redact("token abc-token-0123456789, password abc", env)).toBe("token ***, password ***");
  });

  it("leaves text alone when the environment holds no secret", () => {
    expect(redact("connection refused", {})).toBe("connection refused");
    expect(redact("connection refused", { REDIS_URL: "redis://127.0.0.1:6379" })).toBe("connection refused");
  });
});
