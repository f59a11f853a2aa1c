// Debian's libsystemc.so provides main() and so references sc_main; archsim has its own main and
// drives the kernel directly (sc_start from simulate()), so this is never called. It is compiled
// into every binary that links the machine models.
extern "C" int sc_main(int, char*[]) { return 1; }
