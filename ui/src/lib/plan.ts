// The Plan tab's choices that do not depend on the page: which plan the Revisions list is
// about, and that plan's revisions (a session with several plans has a v1 of each).
import type { PlanRevisionInfo } from "../bindings";
import type { PlanView } from "./types";

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
