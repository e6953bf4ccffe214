/**
 * Command lines a person pastes into a shell: the `call` line `describe` prints, the command a
 * hint names (`toolvisor auth CONFIG NAME`). A word can come from a server (a tool's name) or a
 * file name, so each is quoted to stand for itself exactly and to act on nothing.
 */
import * as Printable from "./Printable.ts"

/**
 * One shell word that stands for `text` exactly: bare when it is plainly safe, else in single
 * quotes, or as `$'…'` (with `\xHH`, `\uHHHH` and `\UHHHHHHHH` escapes) when it holds characters a
 * terminal must not receive raw. `$(…)`, backquotes and `;` inside stay text.
 */
export const word = (text: string): string => {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(text)) return text
  if (!Printable.hasControls(text)) return `'${text.replaceAll("'", "'\\''")}'`
  const escaped = Array.from(text, (char) =>
    char === "\\" || char === "'" ? `\\${char}` : Printable.hasControls(char) ? bashEscape(char) : char
  ).join("")
  return `$'${escaped}'`
}

/**
 * A character as bash's `$'…'` reads it back: `\xHH` is one byte, so past ASCII the character's
 * code point is written (`\u009b`, not `\x9b`, whose byte alone is not valid UTF-8).
 */
const bashEscape = (char: string): string => {
  const code = char.codePointAt(0) ?? 0
  if (code < 0x80) return `\\x${code.toString(16).padStart(2, "0")}`
  return code <= 0xffff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\U${code.toString(16).padStart(8, "0")}`
}

/** A `toolvisor` command line from its words, each quoted as needed. */
export const toolvisor = (...words: ReadonlyArray<string>): string => ["toolvisor", ...words.map(word)].join(" ")
