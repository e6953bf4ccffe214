/**
 * Command lines a person pastes into a shell: the `call` line `describe` prints, the command a
 * hint names (`toolvisor auth CONFIG NAME`). A word can come from a server (a tool's name) or a
 * file name, so each is quoted to stand for itself exactly and to act on nothing.
 */
import * as Printable from "./Printable.ts"

/**
 * One shell word that stands for `text` exactly: bare when it is plainly safe, else in single
 * quotes, or as `$'…'` (with `\xHH` escapes) when it holds control characters, which a terminal
 * must not receive raw. `$(…)`, backquotes and `;` inside stay text.
 */
export const word = (text: string): string => {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(text)) return text
  if (!Printable.hasControls(text)) return `'${text.replaceAll("'", "'\\''")}'`
  const escaped = Array.from(text, (char) =>
    char === "\\" || char === "'" ? `\\${char}` : Printable.hasControls(char) ? Printable.escapeChar(char) : char
  ).join("")
  return `$'${escaped}'`
}

/** A `toolvisor` command line from its words, each quoted as needed. */
export const toolvisor = (...words: ReadonlyArray<string>): string => ["toolvisor", ...words.map(word)].join(" ")
