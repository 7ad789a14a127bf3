{
  "targets": [
    {
      "target_name": "turnback_lstat",
      "sources": ["native/lstat_batch.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "defines": ["NAPI_DISABLE_CPP_EXCEPTIONS"]
    }
  ]
}
