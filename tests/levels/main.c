/* Linked with a level's library whole (and the levels below it) by meson.build: the link fails
 * when that level calls into a level above it. Running it checks nothing more. */
int main(void) { return 0; }
