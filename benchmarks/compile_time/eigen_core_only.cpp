// Reference: the cost of <Eigen/Core> alone (what every TU of the CPU backend will pay).
#include <Eigen/Core>
int main() { return 0; }
