export {
  CaptureSink,
  createLogger,
  discardSink,
  FanoutSink,
  formatJson,
  formatText,
  levelRank,
  logLevels,
  nullLogger,
  parseLogLevel,
  RecentSink,
} from "./logger.ts";
export type { LogFields, LogThreshold, Logger, LogLevel, LogRecord, LogSink } from "./logger.ts";
