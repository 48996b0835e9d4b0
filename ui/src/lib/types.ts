// Names for the generated wire types the UI works with (bindings.ts is generated, never edited).
// Everything here is derived from the bindings, so a change on the Rust side shows up here.
import type {
  Answer_Deserialize,
  BudgetChange_Deserialize,
  ErrorInfo_Serialize,
  Event_Serialize,
  GoalDraft_Serialize,
  GoalOp_Deserialize,
  GoalSnapshot_Serialize,
  InteractionMode,
  Limit,
  MessageSource,
  PlanFileChanged_Serialize,
  PlanView_Serialize,
  QuestionnaireInfo_Serialize,
  SessionSummary_Serialize,
  SessionView_Serialize,
  ToolStatus,
  commands,
} from "../bindings";

export type WireEvent = Event_Serialize;
export type EventType = WireEvent["type"];
export type EventOf<T extends EventType> = Extract<WireEvent, { type: T }>;
export type Goal = GoalSnapshot_Serialize;
/** A goal drafted from rough words, for the user to edit (G-48). */
export type GoalDraft = GoalDraft_Serialize;
/** What an active goal waits for (the agent's `wait`, G-47). */
export type GoalWait = NonNullable<Goal["wait"]>;
/** A goal waiting in the session's queue (G-46). */
export type QueuedGoal = SessionView_Serialize["goal_queue"][number];
export type Questionnaire = QuestionnaireInfo_Serialize;
export type Question = Questionnaire["question"];
/** What a question of kind `K` carries. */
export type QuestionOf<K extends Question["kind"]> = Extract<Question, { kind: K }>["payload"];
export type SessionView = SessionView_Serialize;
export type SessionSummary = SessionSummary_Serialize;
export type InstructionFile = SessionView["instructions"][number];
export type PlanView = PlanView_Serialize;
export type PlanFileChange = PlanFileChanged_Serialize;
export type Answer = Answer_Deserialize;
export type GoalOp = GoalOp_Deserialize;
export type BudgetChange = BudgetChange_Deserialize;
/** A command's error as the app returns it (`setting` names a settings key it is about). */
export type IpcError = ErrorInfo_Serialize;
export type Mode = InteractionMode;
export type { Limit, MessageSource, ToolStatus };

/** What a command of the app gives back when it succeeds. */
type Returned<C extends (...args: never[]) => Promise<unknown>> = Extract<Awaited<ReturnType<C>>, { status: "ok" }> extends { data: infer D } ? D : never;
/** A tool server (MCP) as the Settings' "Tool servers" list shows it: its state and tools. */
export type McpServer = Returned<typeof commands.mcpServers>[number];
export type McpTool = McpServer["tools"][number];
export type McpServerState = McpServer["state"];
/** An image a tool's result carries (base64 `data` of type `mime`). */
export type ToolImage = NonNullable<EventOf<"tool.result">["images"]>[number];
