/**
 * Images the user pastes or drops into the composer: typed by their first bytes (PNG, JPEG,
 * GIF, WebP), at most 5 MB and four to a message, read as base64 to send. The runtime checks
 * them again; this says what is wrong before anything is sent.
 */
import type { ImageInput } from "../bindings";

export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const MAX_IMAGES = 4;

/** An image ready to send, with the thumbnail's source. */
export type Attached = { image: ImageInput; src: string };

/** The image type `head` (a file's first bytes) starts like, by its magic bytes. */
export function imageType(head: Uint8Array): string | null {
  const starts = (bytes: number[], at = 0) => bytes.every((b, i) => head[at + i] === b);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (starts([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (starts([0x47, 0x49, 0x46, 0x38]) && (head[4] === 0x37 || head[4] === 0x39) && head[5] === 0x61) return "image/gif";
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return "image/webp";
  return null;
}

/** `bytes` as base64, in pieces (a spread of megabytes would overflow the call stack). */
export function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** `file`'s bytes, through a FileReader (which every engine the window runs on has). */
function bytesOf(file: File): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(new Uint8Array(r.result as ArrayBuffer));
    r.onerror = () => reject(r.error);
    r.readAsArrayBuffer(file);
  });
}

/** What a pasted or dropped file is called in messages. */
const nameOf = (f: File) => f.name || "pasted image";

/** `file` as an image to send, or why it cannot be. */
export async function readImage(file: File): Promise<Attached | { error: string }> {
  const name = nameOf(file);
  if (file.size > MAX_IMAGE_BYTES) return { error: `${name} is ${(file.size / 1048576).toFixed(1)} MB; images over 5 MB are not sent` };
  const bytes = await bytesOf(file).catch(() => null);
  if (!bytes) return { error: `${name} could not be read` };
  const mime = imageType(bytes);
  if (!mime) return { error: `${name} is not a PNG, JPEG, GIF or WebP image` };
  const data = base64(bytes);
  return { image: { name, data }, src: `data:${mime};base64,${data}` };
}

/** The files of a paste or a drop that may be images (the rest is left to the text box). */
export function filesOf(data: DataTransfer | null): File[] {
  if (!data) return [];
  const out: File[] = [];
  for (const item of Array.from(data.items ?? [])) {
    if (item.kind !== "file") continue;
    const f = item.getAsFile();
    if (f) out.push(f);
  }
  if (!out.length) out.push(...Array.from(data.files ?? []));
  return out;
}
