// A "ko" snippet that compiles: the harness must report it as a failure.
// expect: anything
int main() { return 0; }
