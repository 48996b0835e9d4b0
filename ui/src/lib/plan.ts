// The Plan tab's choices that do not depend on the page: which plan the Revisions list is
// about, and that plan's revisions (a session with several plans has a v1 of each); and plan
// mode turning on or off, in words.
import type { PlanModeReason, PlanRevisionInfo } from "../bindings";
import type { Mode, PlanView } from "./types";

/** The plan whose revisions are listed: the one being read from the plan list, else the
 *  session's current plan, else its newest (by plan list, or by newest revision). */
export function selectedPlan(view: PlanView | null, reading: string | null): string | null {
  if (!view) return null;
  const plans = view.plans ?? [];
  if (reading !== null && (plans.some((p) => p.plan_id === reading) || view.revisions.some((r) => r.plan_id === reading))) return reading;
  const current = plans.find((p) => p.current);
  if (current) return current.plan_id;
  if (plans.length) return plans[plans.length - 1].plan_id;
  return view.revisions.length ? view.revisions[view.revisions.length - 1].plan_id : null;
}

/** The revisions of `planId`, oldest first. */
export function revisionsOf(view: PlanView | null, planId: string | null): PlanRevisionInfo[] {
  if (!view || planId === null) return [];
  return view.revisions.filter((r) => r.plan_id === planId);
}

/** Plan mode turned on or off, as one line in words for the transcript, by why it changed
 *  (the only line about it: `/plan on` and `/plan off` say nothing more). */
export function planModeNotice(mode: Mode, reason: PlanModeReason): string {
  if (mode === "plan") {
    return reason === "agent"
      ? "Plan mode is on, as you agreed: the agent plans first and changes nothing until you approve."
      : "Plan mode is on: your next messages are planned, not implemented (the plan shows in the Plan tab).";
  }
  return `Plan mode is off: ${PLAN_MODE_LEFT[reason]}`;
}

/** Why plan mode went off. */
const PLAN_MODE_LEFT = {
  command: "nothing from the plan was implemented.",
  intent: "nothing from the plan was implemented.",
  agent: "nothing from the plan was implemented.",
  approved: "you approved the plan, and the agent implements it.",
  rejected: "you rejected the plan.",
  withdrawn: "the plan was withdrawn.",
  auto: "in Auto mode the plan goes to work without a review.",
} satisfies Record<PlanModeReason, string>;
