def test_operator_can_list_its_website(http, tenant):
    response = http.get("/api/websites", headers=tenant.operator)
    assert response.status_code == 200
    assert [w["websiteName"] for w in response.json()] == [tenant.website_name]
    assert response.headers["API-Version"] == "1"
