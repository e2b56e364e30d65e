import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, totalmem } from "node:os";

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  node: string;
  redis: string;
  bullmq: string;
  platform: string;
  loadAverageAtStart: number[];
}

function cpuModel(): string {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    if (match) return match[1].trim();
  } catch {
    // Not Linux: fall back to what Node reports.
  }
  return cpus()[0]?.model ?? "unknown";
}

export function machineInfo(redisVersion: string): MachineInfo {
  const require = createRequire(import.meta.url);
  const bullmq = (require("bullmq/package.json") as { version: string }).version;
  return {
    cpuModel: cpuModel(),
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    redis: redisVersion,
    bullmq,
    platform: `${process.platform} ${process.arch}`,
    loadAverageAtStart: loadavg().map((v) => Number(v.toFixed(2))),
  };
}
