import xxhash from 'xxhash-wasm';

type Hasher = Awaited<ReturnType<typeof xxhash>>;
let hasherPromise: Promise<Hasher> | undefined;
let hasher: Hasher | undefined;

/** Loads the wasm hasher once; every hashing entry point awaits this first. */
export async function loadHasher(): Promise<void> {
  if (hasher) return;
  hasherPromise ??= xxhash();
  hasher = await hasherPromise;
}

function requireHasher(): Hasher {
  if (!hasher) throw new Error('turnback: loadHasher() must resolve before hashing');
  return hasher;
}

/**
 * xxh64 of `bytes` as 16 lowercase hex digits. Fast, not collision resistant: the store confirms
 * every dedupe hit byte for byte, and the restore guard accepts the (negligible) accidental risk.
 * Call {@link loadHasher} once before the first use.
 */
export function contentHash(bytes: Uint8Array): string {
  const hasher = requireHasher();
  if (bytes.length <= HASH_PIECE_BYTES) return hasher.h64Raw(bytes).toString(16).padStart(16, '0');
  // The wasm hasher copies its input into its own memory, which grows to fit and never shrinks: a
  // 300 MiB object hashed whole kept 300 MiB more for the life of the process (issue #31's pull).
  // In pieces it holds one piece; the digest is the same.
  const h = hasher.create64();
  for (let at = 0; at < bytes.length; at += HASH_PIECE_BYTES) h.update(bytes.subarray(at, at + HASH_PIECE_BYTES));
  return h.digest().toString(16).padStart(16, '0');
}

/** The most the hasher copies into its memory at once. */
const HASH_PIECE_BYTES = 4 * 1024 * 1024;

/** A streaming xxh64 for files too large to hold in memory at once. */
export interface StreamingHash {
  update(chunk: Uint8Array): void;
  digest(): string;
}

/** Creates a streaming xxh64 with the same output as {@link contentHash}. */
export function createContentHash(): StreamingHash {
  const h = requireHasher().create64();
  return {
    update(chunk) {
      h.update(chunk);
    },
    digest() {
      return h.digest().toString(16).padStart(16, '0');
    },
  };
}
