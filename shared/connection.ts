import { ConfigError } from "./errors.js";
import type { Store } from "./store.js";
import { UpstashStore } from "./stores/upstash.js";

/**
 * Where leaseq finds Redis. The one connection rule, shared by the Lambda functions, the CLI and the
 * local stack: exactly one of these is configured, never a silent pick among several.
 */
export type Connection =
  | { kind: "upstash-secret"; secretArn: string }
  | {
      kind: "upstash";
      url: string;
      token: string;
      /** The other databases of a partitioned queue's partitions (the variables list them, comma-separated). */
      more?: UpstashDatabase[];
    }
  | {
      kind: "tcp";
      url: string;
      /**
       * The other servers of a partitioned queue's partitions (REDIS_URL lists them, comma-separated):
       * partition k on the (k mod count)-th URL (docs/partitions.md).
       */
      more?: string[];
    };

/** A database's REST URL and token: what an Upstash secret holds (a list of them: one per database). */
export interface UpstashDatabase {
  url: string;
  token: string;
}

/** The environment variables of each connection kind, in the order the rule lists them. */
export const CONNECTION_VARIABLES = {
  "upstash-secret": ["UPSTASH_SECRET_ARN"],
  upstash: ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN"],
  tcp: ["REDIS_URL"],
} as const;

const RULE =
  "set exactly one of: UPSTASH_SECRET_ARN (a Secrets Manager secret holding the Upstash URL and token; on AWS), " +
  "UPSTASH_REDIS_REST_URL with UPSTASH_REDIS_REST_TOKEN (Upstash REST), or REDIS_URL (redis:// or rediss://)";

type Env = Record<string, string | undefined>;

/**
 * Reads the connection from `env`. Throws ConfigError when none is set, when more than one kind is
 * set (naming every variable that was), or when the one set is malformed. Never echoes a secret.
 */
export function connectionFromEnv(env: Env): Connection {
  const set = (name: string) => env[name] !== undefined && env[name] !== "";
  const kinds = (Object.keys(CONNECTION_VARIABLES) as Array<keyof typeof CONNECTION_VARIABLES>).filter((kind) =>
    CONNECTION_VARIABLES[kind].some(set),
  );
  if (kinds.length === 0) throw new ConfigError([`no Redis configured: ${RULE}`]);
  if (kinds.length > 1) {
    const given = kinds.flatMap((kind) => CONNECTION_VARIABLES[kind].filter(set));
    throw new ConfigError([`more than one Redis connection is configured (${given.join(", ")} are set): ${RULE}`]);
  }
  const problems: string[] = [];
  let connection: Connection;
  switch (kinds[0]) {
    case "upstash-secret": {
      const secretArn = env.UPSTASH_SECRET_ARN ?? "";
      if (!/^arn:aws[a-z-]*:secretsmanager:/.test(secretArn)) {
        problems.push("UPSTASH_SECRET_ARN must be a Secrets Manager secret ARN (arn:aws:secretsmanager:...)");
      }
      connection = { kind: "upstash-secret", secretArn };
      break;
    }
    case "upstash": {
      // Several databases (a partitioned queue's), comma-separated: the URLs and the tokens in one order.
      const [url, ...more] = (env.UPSTASH_REDIS_REST_URL ?? "").split(",").map((each) => each.trim());
      const [token, ...tokens] = (env.UPSTASH_REDIS_REST_TOKEN ?? "").split(",").map((each) => each.trim());
      if (!url) problems.push("UPSTASH_REDIS_REST_URL must be set with UPSTASH_REDIS_REST_TOKEN");
      else if (![url, ...more].every((each) => /^https?:\/\/\S+$/.test(each))) {
        problems.push("UPSTASH_REDIS_REST_URL must be an http(s) URL (several: comma-separated, each so)");
      }
      if (!token) problems.push("UPSTASH_REDIS_REST_TOKEN must be set with UPSTASH_REDIS_REST_URL");
      else if (tokens.length !== more.length || tokens.some((each) => !each)) {
        problems.push(
          `UPSTASH_REDIS_REST_TOKEN must list a token for each URL of UPSTASH_REDIS_REST_URL (${more.length + 1}), comma-separated, got ${tokens.length + 1}`,
        );
      }
      connection =
        more.length > 0
          ? { kind: "upstash", url, token, more: more.map((each, i) => ({ url: each, token: tokens[i] })) }
          : { kind: "upstash", url, token };
      break;
    }
    default: {
      // Several URLs, comma-separated: the servers of a partitioned queue's partitions.
      const [url, ...more] = (env.REDIS_URL ?? "").split(",").map((each) => each.trim());
      if (![url, ...more].every((each) => /^rediss?:\/\/\S+$/.test(each))) {
        problems.push("REDIS_URL must start with redis:// or rediss:// (several: comma-separated, each so)");
      }
      connection = more.length > 0 ? { kind: "tcp", url, more } : { kind: "tcp", url };
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return connection;
}

/** Where a connection points, for messages and `leaseq stats`: never a token or password. */
export function describeConnection(connection: Connection): string {
  switch (connection.kind) {
    case "upstash-secret":
      return `Upstash (credentials from secret ${connection.secretArn})`;
    case "upstash":
      return `Upstash at ${[connection.url, ...(connection.more ?? []).map((database) => database.url)].map(originOf).join(", ")}`;
    case "tcp":
      return `Redis at ${[connection.url, ...(connection.more ?? [])].map(originOf).join(", ")}`;
  }
}

function originOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return "(a malformed URL)";
  }
}

/**
 * Opens a store for `connection` (the first, when it names several databases: openStores opens them
 * all). A secret is read by `readSecret` (leaseq/lambda passes one that uses Secrets Manager; the
 * library itself has no AWS SDK). The TCP client (ioredis) loads on demand, so an Upstash
 * deployment, the default on Lambda, never parses it on a cold start.
 */
export async function openStore(
  connection: Connection,
  readSecret?: (secretArn: string) => Promise<UpstashDatabase | UpstashDatabase[]>,
): Promise<Store> {
  return (await openStores(connection, readSecret, 1))[0];
}

/**
 * A store for each database `connection` names: one, or for a partitioned queue several (REDIS_URL
 * listing several servers, an Upstash secret holding a list), in their order; at most `most`.
 */
export async function openStores(
  connection: Connection,
  readSecret?: (secretArn: string) => Promise<UpstashDatabase | UpstashDatabase[]>,
  most = Number.POSITIVE_INFINITY,
): Promise<Store[]> {
  switch (connection.kind) {
    case "tcp": {
      const { TcpStore } = await import("./stores/tcp.js");
      return [connection.url, ...(connection.more ?? [])]
        .slice(0, most)
        .map((url) => TcpStore.fromUrl(url, { source: "REDIS_URL" }));
    }
    case "upstash":
      return [connection, ...(connection.more ?? [])]
        .slice(0, most)
        .map(({ url, token }) => new UpstashStore({ url, token, source: "UPSTASH_REDIS_REST_URL" }));
    case "upstash-secret": {
      if (!readSecret) throw new ConfigError(["UPSTASH_SECRET_ARN is set, but nothing here can read secrets"]);
      const read = await readSecret(connection.secretArn);
      return (Array.isArray(read) ? read : [read]).slice(0, most).map(
        (database, index) =>
          new UpstashStore({
            ...database,
            source: `the "url" of ${Array.isArray(read) ? `database ${index} of ` : ""}secret ${connection.secretArn} (UPSTASH_SECRET_ARN)`,
          }),
      );
    }
  }
}
