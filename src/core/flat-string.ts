// Strings a picture holds one of per file, made flat. V8 makes `a + b` of 13 characters or more a
// cons string: a 32-byte node pointing at both parts, which becomes a node pointing at a flat copy
// the first time the string is hashed (a Map key) or read whole, so each such path costs its text
// twice over plus the node. A slice (`match`, `slice`) keeps the whole text it was cut from alive.
// At 250,000 files these were 15 MiB of nodes and ~26 MiB of pinned documents (heap snapshots,
// CHECKPOINT-DESIGN.md, "Where a server's memory goes").

/** `head + tail` as one flat string: what a joined array gives (measured: never a cons string). */
export function flatConcat(head: string, tail: string): string {
  if (head === '') return tail;
  return [head, tail].join('');
}

/**
 * A copy of `text` that holds nothing else alive: never a slice of a larger string, never a cons
 * node. For the few strings kept from a large text (ids found in a document read whole).
 */
export function detachedCopy(text: string): string {
  // Shorter than 13 characters, V8 copies a slice anyway; a joined array of two parts is flat.
  return text.length < 2 ? text : [text.slice(0, 1), text.slice(1)].join('');
}
