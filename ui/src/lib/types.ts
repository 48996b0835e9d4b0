// Names for the generated wire types the UI works with (bindings.ts is generated, never edited).
import type {
  Event_Serialize,
  GoalSnapshot_Serialize,
  QuestionnaireInfo_Serialize,
  SessionView_Serialize,
  SessionSummary_Serialize,
  Answer_Deserialize,
  Value,
} from "../bindings";

export type WireEvent = Event_Serialize;
export type EventOf<T extends WireEvent["type"]> = Extract<WireEvent, { type: T }>;
export type Goal = GoalSnapshot_Serialize;
export type Questionnaire = QuestionnaireInfo_Serialize;
export type SessionView = SessionView_Serialize;
export type SessionSummary = SessionSummary_Serialize;
export type Answer = Answer_Deserialize;
export type Json = Value;

/** A field of a JSON object payload, or undefined. */
export function field(v: Json | undefined, key: string): Json | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v[key] : undefined;
}

export function str(v: Json | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}
