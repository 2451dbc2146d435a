// The site's search: over window.DSH_SEARCH (search-index.js), by rule id, case id or
// words of a rule's title. Results are built as DOM nodes with textContent: no entry's
// text is ever parsed as HTML.
(function () {
  "use strict";
  var index = window.DSH_SEARCH || [];
  var params = new URLSearchParams(window.location.search);
  var query = (params.get("q") || "").trim();
  var box = document.querySelector("form.search input[name=q]");
  if (box) { box.value = query; }
  var list = document.getElementById("results");
  var count = document.getElementById("count");
  if (!list) { return; }
  var words = query.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 0; });
  function matches(e) {
    var id = e.id.toLowerCase();
    var text = (e.id + " " + e.t).toLowerCase();
    if (words.length === 1 && id === words[0]) { return 2; }
    return words.every(function (w) { return text.indexOf(w) !== -1; }) ? 1 : 0;
  }
  var found = [];
  if (words.length) {
    index.forEach(function (e) { var m = matches(e); if (m) { found.push([m, e]); } });
    found.sort(function (a, b) { return b[0] - a[0]; });
  }
  count.textContent = words.length ? found.length + " found for \u201c" + query + "\u201d" : "Type in the box above.";
  found.slice(0, 500).forEach(function (pair) {
    var e = pair[1];
    var li = document.createElement("li");
    li.className = e.k;
    var kind = document.createElement("span");
    kind.className = "kind";
    kind.textContent = e.k;
    var a = document.createElement("a");
    a.href = e.u;
    a.textContent = e.id;
    var t = document.createElement("span");
    t.textContent = " " + e.t;
    li.appendChild(kind);
    li.appendChild(a);
    li.appendChild(t);
    list.appendChild(li);
  });
})();
