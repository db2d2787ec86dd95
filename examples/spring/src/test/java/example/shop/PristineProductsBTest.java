package example.shop;

/** The repository tests on pristine (one of four classes that run at once). */
class PristineProductsBTest extends PristineContract {
}
