package example.shop;

/** The repository tests on the one shared server (one of four classes, run one after another). */
class SharedServerProductsDTest extends SharedServerContract {
}
