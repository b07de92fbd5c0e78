import { formatJson, formatText, type LogRecord, type LogSink } from "./logger.ts";

/** Writes one line per record to a Node writable (stderr by default). */
export class StreamSink implements LogSink {
  #write: (line: string) => void;
  #json: boolean;
  constructor(options: { json?: boolean; write?: (line: string) => void } = {}) {
    this.#json = options.json ?? false;
    this.#write = options.write ?? ((line) => process.stderr.write(line));
  }
  write(record: LogRecord): void {
    this.#write((this.#json ? formatJson(record) : formatText(record)) + "\n");
  }
}
