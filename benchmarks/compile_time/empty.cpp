// Baseline: a translation unit with nothing in it but main.
int main() { return 0; }
