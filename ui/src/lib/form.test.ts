import { describe, expect, it } from "vitest";
import { fieldLabel, formContent, inputType, startDrafts, type FormField } from "./form";

const text = (name: string, p: Partial<FormField> = {}): FormField => ({ name, title: null, description: null, required: false, kind: { type: "text", format: null, min_length: null, max_length: null }, default: null, ...p });
const options = [
  { value: "a", label: "A" },
  { value: "b", label: "B" },
  { value: "c", label: "C" },
];

const fields: FormField[] = [
  text("name", { title: "Your name", required: true, default: "Ada" }),
  { ...text("age"), kind: { type: "number", integer: true, minimum: 0, maximum: 150 }, default: 36 },
  { ...text("ratio"), kind: { type: "number", integer: false, minimum: null, maximum: null } },
  { ...text("ok"), kind: { type: "boolean" } },
  { ...text("one"), kind: { type: "choice", options, multiple: false, min_items: null, max_items: null }, default: "zzz" },
  { ...text("many"), kind: { type: "choice", options, multiple: true, min_items: null, max_items: null }, default: ["c", "nope"] },
];

describe("a server's form", () => {
  it("starts each field from its default, when the default is of its type", () => {
    const d = startDrafts(fields);
    expect(d.text).toEqual({ name: "Ada", age: "36", ratio: "", one: "" });
    expect(d.flag).toEqual({ ok: false });
    expect(d.picked).toEqual({ many: ["c"] });
  });

  it("answers with every value of its field's type, and leaves empty fields out", () => {
    const d = startDrafts(fields);
    expect(formContent(fields, d)).toEqual({ name: "Ada", age: 36, ok: false, many: ["c"] });
    d.text.age = " 41 ";
    d.text.ratio = "0.25";
    d.flag.ok = true;
    d.text.one = "b";
    // Picked in any order, sent in the options' order.
    d.picked.many = ["c", "a"];
    expect(formContent(fields, d)).toEqual({ name: "Ada", age: 41, ratio: 0.25, ok: true, one: "b", many: ["a", "c"] });
    // A number that does not read as one goes as typed: the runtime refuses it by name.
    d.text.age = "forty";
    d.text.name = "";
    d.picked.many = [];
    expect(formContent(fields, d)).toEqual({ age: "forty", ratio: 0.25, ok: true, one: "b" });
  });

  it("sends an empty list for a required multiple choice, for the runtime to weigh", () => {
    const f: FormField[] = [{ ...text("tags", { required: true }), kind: { type: "choice", options, multiple: true, min_items: 1, max_items: null } }];
    expect(formContent(f, startDrafts(f))).toEqual({ tags: [] });
  });

  it("picks the input for a text's format, and names a field by its title", () => {
    expect(["email", "uri", "date", "date-time", null].map(inputType)).toEqual(["email", "url", "date", "text", "text"]);
    expect(fieldLabel(fields[0])).toBe("Your name");
    expect(fieldLabel(text("plain", { title: "  " }))).toBe("plain");
  });
});
