// The helpers live in local/ since `npm start` uses them too; the tests keep importing them here.
export { freePort, pingRedis, type StartedRedis, startRedisServer } from "../../local/redis-server.js";
