// A tool server's form (MCP elicitation) as the question dialog fills it in: what each field
// starts with, and the answer's content with every value of its field's type. The values are
// checked by the runtime (`Question::accepts`), whose refusal names the field.
import type { Value } from "../bindings";
import type { QuestionOf } from "./types";

export type Form = QuestionOf<"elicitation">;
export type FormField = Form["fields"][number];

/** What the inputs hold, by field name: the text of a text, number or single-choice field,
 *  a checkbox's state, the options picked of a multiple choice. */
export type Drafts = {
  text: Record<string, string>;
  flag: Record<string, boolean>;
  picked: Record<string, string[]>;
};

/** The inputs as the form starts: each field's `default` where it has one of its type. */
export function startDrafts(fields: FormField[]): Drafts {
  const d: Drafts = { text: {}, flag: {}, picked: {} };
  for (const f of fields) {
    const v = f.default;
    const k = f.kind;
    switch (k.type) {
      case "text":
        d.text[f.name] = typeof v === "string" ? v : "";
        break;
      case "number":
        d.text[f.name] = typeof v === "number" ? String(v) : "";
        break;
      case "boolean":
        d.flag[f.name] = v === true;
        break;
      case "choice": {
        const known = (x: Value) => typeof x === "string" && k.options.some((o) => o.value === x);
        if (k.multiple) d.picked[f.name] = Array.isArray(v) ? v.filter(known).map(String) : [];
        else d.text[f.name] = typeof v === "string" && known(v) ? v : "";
        break;
      }
    }
  }
  return d;
}

/** The answer's content: each field filled in, as its type (a number as a number, a
 *  checkbox as true or false, a multiple choice as a list in the options' order). An empty
 *  field is left out (a required one is then refused by the runtime, by name); a number
 *  that does not read as one goes as typed, for the runtime to refuse. */
export function formContent(fields: FormField[], d: Drafts): { [key: string]: Value } {
  const out: { [key: string]: Value } = {};
  for (const f of fields) {
    const k = f.kind;
    switch (k.type) {
      case "text": {
        const t = d.text[f.name] ?? "";
        if (t !== "") out[f.name] = t;
        break;
      }
      case "number": {
        const t = (d.text[f.name] ?? "").trim();
        if (t === "") break;
        const n = Number(t);
        out[f.name] = Number.isFinite(n) ? n : t;
        break;
      }
      case "boolean":
        out[f.name] = d.flag[f.name] ?? false;
        break;
      case "choice":
        if (k.multiple) {
          const picked = d.picked[f.name] ?? [];
          if (picked.length || f.required) out[f.name] = k.options.map((o) => o.value).filter((v) => picked.includes(v));
        } else {
          const t = d.text[f.name] ?? "";
          if (t !== "") out[f.name] = t;
        }
        break;
    }
  }
  return out;
}

/** The input type for a text field's format (a date and time is typed as text: the window's
 *  date-time picker drops the seconds the format needs). */
export function inputType(format: string | null): "text" | "email" | "url" | "date" {
  switch (format) {
    case "email":
      return "email";
    case "uri":
      return "url";
    case "date":
      return "date";
    default:
      return "text";
  }
}

/** What a field is called on screen: its title, else its name. */
export function fieldLabel(f: FormField): string {
  return f.title?.trim() ? f.title : f.name;
}
