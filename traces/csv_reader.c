/* traces/csv_reader.c - to be written in this change. */
typedef int lsim_unwritten_csv_reader;
