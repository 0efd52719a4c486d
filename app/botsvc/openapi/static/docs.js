// The /docs page: Swagger UI (vendored beside this file, see LICENSE) showing
// /openapi.json. Nothing is loaded from outside the service; the validator
// badge, which would send the document to a public service, is off.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    defaultModelsExpandDepth: 0,
    docExpansion: "list"
  });
});
