// A "ko" snippet that fails with another message than expected: the harness must report it.
// expect: this sentence is not what the compiler prints
static_assert(sizeof(int) == 0, "some other failure");
int main() { return 0; }
