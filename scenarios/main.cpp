// dtsim executable: hands the command line to scenarios::run_cli.
#include <iostream>

#include "scenarios/cli.h"

int main(int argc, char** argv) { return scenarios::run_cli(argc, argv, std::cout, std::cerr); }
