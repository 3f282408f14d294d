// The public surface of the rollout operations on live workloads (scale, pause, resume, undo), kept at this
// path for its importers; the code is in rollout/: common.ts, scale.ts, pause.ts, undo.ts.
export { describeRef, PAUSED_PARTITION, PAUSED_UPDATE_STRATEGY, type WorkloadRef } from './rollout/common.ts';
export { type PauseResult, pause, type ResumeResult, resume } from './rollout/pause.ts';
export { type ScaleResult, scale } from './rollout/scale.ts';
export { type UndoResult, undo } from './rollout/undo.ts';
