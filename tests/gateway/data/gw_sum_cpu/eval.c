/* Fixture harness: never compiled by the gateway tests. */
int main(void) { return 0; }
