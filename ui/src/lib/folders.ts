// The session list's headings: one per project folder, each named so it can be told apart
// from the others.

/** A folder's path as one spelling: no trailing separator ("/repo/" and "/repo" are one). */
export function folderKey(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, "");
  return trimmed === "" ? path : trimmed;
}

const parts = (path: string) => path.split(/[\\/]/).filter(Boolean);

/**
 * The heading of each folder, by its key: its name, with as many of the folders above it as
 * it takes to tell it from another folder of the same name ("work/app" and "old/app").
 */
export function folderHeadings(keys: string[]): Map<string, string> {
  const split = keys.map((k) => ({ key: k, parts: parts(k) }));
  const out = new Map<string, string>();
  for (const { key, parts: mine } of split) {
    let n = 1;
    const tail = (p: string[], m: number) => p.slice(-m).join("/");
    const clash = () => split.some((o) => o.key !== key && tail(o.parts, n) === tail(mine, n));
    while (n < mine.length && clash()) n++;
    out.set(key, tail(mine, n) || key);
  }
  return out;
}
