// turnback's optional native accelerator: many lstat calls in one call from JavaScript.
//
// A picture is mostly lstat: ~2.9 µs a call in the kernel on our test VM, ~5 µs through
// fs.lstatSync (path checks, a Stats object and four Date objects per call). This module does
// the same lstat calls and writes the same five numbers per path that the JavaScript path in
// src/fs/parallel-lstat.ts writes, so the two are interchangeable; a test compares them.
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

// Where struct stat keeps the modification time with nanoseconds. Other systems (Windows) fail to
// compile this file, and turnback runs its JavaScript path there.
#ifdef __APPLE__
#define MTIME_OF(st) ((st).st_mtimespec)
#else
#define MTIME_OF(st) ((st).st_mtim)
#endif

#define STAT_FIELDS 5
#define KIND_MISSING 0
#define KIND_FILE 1
#define KIND_SYMLINK 2
#define KIND_FOLDER 3
#define KIND_OTHER 4
#define KIND_FAILED 5

static napi_value throw_type_error(napi_env env, const char* message) {
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
  return NULL;
}

static void stat_one(const char* path, double* at) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    at[0] = (errno == ENOENT || errno == ENOTDIR) ? KIND_MISSING : KIND_FAILED;
    return;
  }
  mode_t type = st.st_mode & S_IFMT;
  at[0] = type == S_IFREG ? KIND_FILE : type == S_IFLNK ? KIND_SYMLINK : type == S_IFDIR ? KIND_FOLDER : KIND_OTHER;
  at[1] = (double)(st.st_mode & 07777);
  at[2] = (double)st.st_size;
  // The same arithmetic as Node's Stats#mtimeMs (sec * 1e3 + nsec / 1e6), so values compare equal.
  at[3] = (double)MTIME_OF(st).tv_sec * 1000.0 + (double)MTIME_OF(st).tv_nsec / 1000000.0;
  at[4] = (double)st.st_ino;
}

// lstatJoined(base: string, joined: string, count: number, out: Float64Array): void
// `joined` holds `count` relative paths separated by NUL; '' stands for `base` itself. The stats of
// path i go to out[i*5 .. i*5+4]. Never throws for a path: a failure is a kind code.
static napi_value lstat_joined(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4) {
    return throw_type_error(env, "lstatJoined(base, joined, count, out) takes four arguments");
  }
  char base[PATH_MAX];
  size_t base_length = 0;
  if (napi_get_value_string_utf8(env, argv[0], base, sizeof base, &base_length) != napi_ok) {
    return throw_type_error(env, "base must be a string");
  }
  if (base_length + 1 >= sizeof base) return throw_type_error(env, "base is too long");
  size_t joined_length = 0;
  if (napi_get_value_string_utf8(env, argv[1], NULL, 0, &joined_length) != napi_ok) {
    return throw_type_error(env, "joined must be a string");
  }
  uint32_t count = 0;
  if (napi_get_value_uint32(env, argv[2], &count) != napi_ok) return throw_type_error(env, "count must be a number");
  napi_typedarray_type type;
  size_t length = 0;
  void* data = NULL;
  if (napi_get_typedarray_info(env, argv[3], &type, &length, &data, NULL, NULL) != napi_ok || type != napi_float64_array) {
    return throw_type_error(env, "out must be a Float64Array");
  }
  if (length < (size_t)count * STAT_FIELDS) return throw_type_error(env, "out is too short for count paths");
  double* out = (double*)data;
  // A NUL inside the base would cut every path short: fail them all, as lstatSync refuses them.
  if (memchr(base, '\0', base_length) != NULL) {
    for (uint32_t i = 0; i < count; i++) {
      double* at = out + (size_t)i * STAT_FIELDS;
      at[0] = KIND_FAILED;
      at[1] = at[2] = at[3] = at[4] = 0;
    }
    return NULL;
  }

  // The paths arrive as one UTF-8 copy; each is cut from it in place.
  char stack_text[65536];
  char* text = stack_text;
  napi_value buffer_value = NULL;
  if (joined_length + 1 > sizeof stack_text) {
    void* buffer_data = NULL;
    if (napi_create_buffer(env, joined_length + 1, &buffer_data, &buffer_value) != napi_ok) {
      return throw_type_error(env, "cannot allocate the path text");
    }
    text = (char*)buffer_data;
  }
  size_t copied = 0;
  napi_get_value_string_utf8(env, argv[1], text, joined_length + 1, &copied);

  char path[PATH_MAX];
  memcpy(path, base, base_length);
  path[base_length] = '/';
  size_t from = 0;
  for (uint32_t i = 0; i < count; i++) {
    double* at = out + (size_t)i * STAT_FIELDS;
    at[1] = at[2] = at[3] = at[4] = 0;
    size_t end = from;
    while (end < copied && text[end] != '\0') end++;
    size_t rel_length = end - from;
    if (from > copied) {
      at[0] = KIND_FAILED;  // fewer paths than count: never read past the text
      continue;
    }
    if (rel_length == 0) {
      path[base_length] = '\0';
      stat_one(path, at);
      path[base_length] = '/';
    } else if (base_length + 1 + rel_length >= sizeof path) {
      at[0] = KIND_FAILED;  // ENAMETOOLONG, as lstat itself would say
    } else {
      memcpy(path + base_length + 1, text + from, rel_length);
      path[base_length + 1 + rel_length] = '\0';
      stat_one(path, at);
    }
    from = end + 1;
  }
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "lstatJoined", NAPI_AUTO_LENGTH, lstat_joined, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "lstatJoined", fn) != napi_ok) return NULL;
  return exports;
}
