// The helpers live in dev/ since `npm start` uses them too; the tests keep importing them here.
export { freePort, pingRedis, type StartedRedis, startRedisServer } from "../../dev/redis-server.js";
