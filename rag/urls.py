

app_name = "rag"

urlpatterns: list = []
