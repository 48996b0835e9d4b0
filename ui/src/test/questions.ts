// Questionnaires as the app sends them, for tests: every field present, the ones a test does
// not care about at their plain defaults.
import type { Question, Questionnaire, QuestionOf } from "../lib/types";

export const noGrants: QuestionOf<"permission">["grants"] = { session: null, session_text: null, prefix: null, prefix_text: null };

export function permission(p: Partial<QuestionOf<"permission">>): Question {
  const payload: QuestionOf<"permission"> = {
    tool: "bash",
    shell: true,
    arguments: {},
    summary: "",
    command: null,
    files: [],
    git: false,
    grants: noGrants,
    call_id: "tc_1_0_0",
    call_sha256: "0".repeat(64),
    ...p,
  };
  return { kind: "permission", payload };
}

export function planApproval(p: Partial<QuestionOf<"plan_approval">>): QuestionOf<"plan_approval"> {
  return { plan_id: "p1", version: 1, key: "k", sha256: "x", bytes: 1, truncated: false, path: "/d/artifacts/plan.md", options: [], budget: null, steps: [], ...p };
}

export function pending(question: Question, id = "q1"): Questionnaire {
  return { id, question, status: "pending", answer: null };
}
