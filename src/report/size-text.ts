/** A byte count for a person: `512 B`, `3.4 KiB`, `12.0 MiB` (one formatter, so `status` and `verify` print a size alike). */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
