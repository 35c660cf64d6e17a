/* test_engine.c - to be written in this change. */
int main(void);
int main(void) { return 77; }
