// The agent's logger: pino, JSON lines, with secrets never passed in (redaction of known secret paths as a net).
import { type Logger, pino } from 'pino';

export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  return pino(
    {
      level: options.level ?? process.env.MOORING_LOG_LEVEL ?? 'info',
      base: { app: 'mooring' },
      redact: {
        paths: ['password', 'token', 'secret', '*.password', '*.token', '*.secret'],
        censor: '<redacted>',
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? process.stdout,
  );
}
