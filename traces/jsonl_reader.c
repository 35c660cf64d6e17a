/* traces/jsonl_reader.c - to be written in this change. */
typedef int lsim_unwritten_jsonl_reader;
