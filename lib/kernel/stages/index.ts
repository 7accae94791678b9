/** The stage API: HologramAgent's turn stages as typed handlers over dsh hooks. */
export { STAGES } from './types.ts'
export type {
  AfterOutputInput, AfterToolcallDecision, AfterToolcallInput, AgentScope, BeforeToolcallDecision, OnInputDecision, OnInputInput,
  PostActionDecision, PostActionInput, PreActionDecision, PreActionInput, Stage, StageHandler, StageInputs, StageDecisions,
  StageOptions, StageStats, StageText, StageTurn, ToolCallInput,
} from './types.ts'
export type { Stages } from './api.ts'
export type { LoopExits } from './bind.ts'
export { preStepAsPreAction, type PreStepListener, type PreStepPayload } from './adapt.ts'
