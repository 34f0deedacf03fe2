/* Carries include/ (amber.h) to Swift targets; intentionally empty. */
