/* hold.c - to be written. */
int main(void);
int main(void) { return 0; }
