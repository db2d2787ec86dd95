from django.db import models


class Customer(models.Model):
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=100)
    created = models.DateTimeField(auto_now_add=True)


class Product(models.Model):
    sku = models.CharField(max_length=20, unique=True)
    title = models.CharField(max_length=200)
    price_cents = models.PositiveIntegerField()
    stock = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["title"])]


class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="orders")
    placed = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, default="open", db_index=True)

    def total_cents(self):
        return sum(l.quantity * l.unit_cents for l in self.lines.all())


class OrderLine(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="lines")
    product = models.ForeignKey(Product, on_delete=models.PROTECT)
    quantity = models.PositiveIntegerField()
    unit_cents = models.PositiveIntegerField()


def place_order(customer, items):
    """Place an order of (product, quantity) pairs, taking them from stock."""
    from django.db import transaction

    with transaction.atomic():
        order = Order.objects.create(customer=customer)
        for product, qty in items:
            p = Product.objects.select_for_update().get(pk=product.pk)
            if p.stock < qty:
                raise ValueError(f"only {p.stock} of {p.sku} left")
            p.stock -= qty
            p.save(update_fields=["stock"])
            OrderLine.objects.create(order=order, product=p, quantity=qty, unit_cents=p.price_cents)
        return order
