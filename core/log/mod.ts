export {
  CaptureSink,
  createLogger,
  discardSink,
  FanoutSink,
  formatJson,
  formatText,
  logLevels,
  nullLogger,
  parseLogLevel,
} from "./logger.ts";
export type { LogFields, Logger, LogLevel, LogRecord, LogSink } from "./logger.ts";
